"""Model families: each a short file composing components, or a config switch of one."""
