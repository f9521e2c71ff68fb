"""ttyoffer.nvim's Python core: ptys, the offer state machine, the screen model."""

__version__ = "0.1.0"
