-- lazy.nvim runs this file after installing or updating the plugin: what
-- `:TtyOffer install` does (the host's Python environment, the help tags,
-- then the host started with it). In the background when the editor has a
-- UI, so an update does not wait for pip; to the end when headless.
require('ttyoffer.command').subcommands.install()
