-- The editor's own spawners, as they were when the plugin first loaded:
-- what the wrappers call, what the plugin uses for its own processes (the
-- host, its checks), and what turning the wrappers off puts back, the very
-- same functions (identity, not a copy).
local M = {}

M.jobstart = vim.fn.jobstart
M.system = vim.system
M.fn_system = vim.fn.system
M.systemlist = vim.fn.systemlist

return M
