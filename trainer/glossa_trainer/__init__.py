"""Glossa's trainer: the Python side of the protocol shared with the extension."""
