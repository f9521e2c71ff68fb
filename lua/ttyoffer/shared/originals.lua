-- The editor's own spawners, as they were when the plugin first loaded:
-- what the wrappers call, what the plugin uses for its own processes (the
-- host, its checks), and what turning the wrappers off puts back, the very
-- same functions (identity, not a copy), vim.uv.spawn among them. jobstop()
-- too, which the Lua side wraps for the commands the /bin/sh prologue leads
-- (routes/stopping.lua). And luv's pipes, which its spawn is given: a test
-- framework that later mocks vim.uv.spawn mocks them too (mini.test's
-- spawn mock does), and neither may reach a process of the plugin's own.
local M = {}

M.jobstart = vim.fn.jobstart
M.system = vim.system
M.fn_system = vim.fn.system
M.systemlist = vim.fn.systemlist
M.jobstop = vim.fn.jobstop
M.uv_spawn = vim.uv.spawn
M.new_pipe = vim.uv.new_pipe

return M
