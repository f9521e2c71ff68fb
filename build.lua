-- lazy.nvim runs this file after installing or updating the plugin: the
-- host's Python environment and the help tags, synchronously.
require('ttyoffer.install').run({ sync = true })
