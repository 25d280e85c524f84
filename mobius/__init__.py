"""The `mobius` application: one command line composed from every layer's commands."""
