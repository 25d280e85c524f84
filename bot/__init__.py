"""The webhook bot: Hub discussion mentions and GitHub issue commands, parsed and answered."""
