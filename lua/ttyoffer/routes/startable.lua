-- Whether the kernel would refuse to start a program that looks executable.
--
-- A wrapped command's program is started by the prologue's /bin/sh: a
-- program the kernel refuses (its #! interpreter or its ELF
-- loader missing, or not executable) would "run" and exit 127 with the
-- shell's message, where the stock spawner fails to start it (vim.system()
-- raises ENOENT, jobstart() raises E903, system() sets v:shell_error -1).
-- Such a program is left to the stock spawner, which reports its own error.
-- Only uv calls: callable from a fast event (a luv callback).
local M = {}

local uv = vim.uv

-- What the kernel reads of a program to choose how to start it
-- (BINPRM_BUF_SIZE), and how deep interpreters may nest (exec_binprm).
local SCRIPT_HEAD = 256
local MAX_DEPTH = 5
-- An ELF file's program headers and its loader's path are in the first
-- KB of every common binary; past it, one more read.
local ELF_HEAD = 1024
local PT_INTERP = 3

-- What was found of a file, kept while a stat says it is the same file,
-- unchanged (its device and inode, size, mode, and modification and change
-- times, which a chmod, a rewrite or a replacement all move): every spawn
-- asks of the same few programs and loaders, and one stat costs less than
-- an open, a read and a close (60-80 us a spawn, measured in a rotation).
local known = {} --- @type table<string, {stat: uv.fs_stat.result, value: any}>
local known_count = 0
local KNOWN_MAX = 256

local same = require('ttyoffer.shared.files').unchanged

--- `find(path, stat)` for the file at `path` as it is now, from what was
--- kept of it when it has not changed (`kind` keeps apart what different
--- questions found of one file). `find` is a function made once, not per
--- call: this runs on every spawn.
local function remembered(kind, path, stat, find)
  local key = kind .. path
  local entry = known[key]
  if entry and same(entry.stat, stat) then
    return entry.value
  end
  local value = find(path, stat)
  if not entry then
    if known_count >= KNOWN_MAX then
      known, known_count = {}, 0
    end
    known_count = known_count + 1
  end
  known[key] = { stat = stat, value = value }
  return value
end

--- 'EACCES' unless `path` (whose `stat` this is) is a regular file with
--- execute permission; false when it is.
local function executable_verdict(path, stat)
  if stat.type ~= 'file' or not uv.fs_access(path, 'X') then
    return 'EACCES'
  end
  return false
end

--- The reason the kernel would give for not executing `path` as a file
--- (open_exec: a regular file with execute permission), or nil.
--- @param path string
--- @return string?
local function not_executable(path)
  local stat = uv.fs_stat(path)
  if not stat then
    return 'ENOENT'
  end
  return remembered('x', path, stat, executable_verdict) or nil
end

--- The #! line's interpreter, parsed as the kernel does (load_script):
--- nil when the line has none or could be cut (the kernel then refuses
--- with ENOEXEC, and a spawner falls back to /bin/sh the same way ours does).
--- @param head string
--- @return string?
local function script_interpreter(head)
  local line = head:sub(3)
  local newline = line:find('\n', 1, true)
  if newline then
    line = line:sub(1, newline - 1)
  elseif #head >= SCRIPT_HEAD and not line:find('^[ \t]*[^ \t%z]+[ \t%z]') then
    return nil -- the interpreter's path may go on past what is read
  end
  return line:match('^[ \t]*([^ \t%z]+)')
end

--- Decode an unsigned integer of `size` bytes at `at` (1-based).
local function uint(data, at, size, little)
  local value = 0
  for i = 0, size - 1 do
    local byte = data:byte(little and (at + size - 1 - i) or (at + i)) or 0
    value = value * 256 + byte
  end
  return value
end

--- The loader an ELF executable names (PT_INTERP), or nil (static, or not
--- something to judge).
--- @param fd integer
--- @param head string
--- @return string?
local function elf_interpreter(fd, head)
  local class, data = head:byte(5), head:byte(6)
  if (class ~= 1 and class ~= 2) or (data ~= 1 and data ~= 2) then
    return nil
  end
  local wide, little = class == 2, data == 1
  local phoff = uint(head, wide and 33 or 29, wide and 8 or 4, little)
  local phentsize = uint(head, wide and 55 or 43, 2, little)
  local phnum = uint(head, wide and 57 or 45, 2, little)
  if phnum == 0 or phentsize < (wide and 56 or 32) or phnum > 256 then
    return nil
  end
  local headers = head:sub(phoff + 1, phoff + phnum * phentsize)
  if #headers < phnum * phentsize then
    headers = uv.fs_read(fd, phnum * phentsize, phoff) or ''
  end
  for i = 0, phnum - 1 do
    local at = i * phentsize + 1
    if #headers < at + phentsize - 1 then
      return nil
    end
    if uint(headers, at, 4, little) == PT_INTERP then
      local offset = uint(headers, at + (wide and 8 or 4), wide and 8 or 4, little)
      local size = uint(headers, at + (wide and 32 or 16), wide and 8 or 4, little)
      if size < 2 or size > 4096 then
        return nil
      end
      local path = head:sub(offset + 1, offset + size)
      if #path < size then
        path = uv.fs_read(fd, size, offset) or ''
      end
      return path:match('^([^%z]+)')
    end
  end
  return nil
end

--- The interpreter the kernel would start `path` with, or nil (a binary
--- without a loader, or a file the kernel leaves to the spawner's fallback);
--- and whether it is an ELF loader (loaded as it is: nothing nests past it).
--- @param path string
--- @return string?, boolean?
local function read_interpreter(path)
  local fd = uv.fs_open(path, 'r', 0)
  if not fd then
    return nil -- unreadable (execute-only): nothing to judge it by
  end
  local head = uv.fs_read(fd, ELF_HEAD, 0) or ''
  local found, elf
  if head:sub(1, 2) == '#!' then
    found = script_interpreter(head:sub(1, SCRIPT_HEAD))
  elseif head:sub(1, 4) == '\127ELF' then
    found, elf = elf_interpreter(fd, head), true
  end
  uv.fs_close(fd)
  return found, elf
end

--- read_interpreter()'s two results in one table, to be kept.
local function read_interpreter_pair(path)
  return { read_interpreter(path) }
end

--- read_interpreter(), read again only when the file changed.
--- @param path string
--- @return string?, boolean?
local function interpreter(path)
  local stat = uv.fs_stat(path)
  if not stat then
    return nil -- gone: the spawner finds that out itself
  end
  local found = remembered('i', path, stat, read_interpreter_pair)
  return found[1], found[2]
end

--- Why the kernel would refuse to execute `path` (an errno name: ENOENT,
--- EACCES, ELOOP), or nil when it would start it (or cannot be judged: the
--- command is then given its offer, as before).
--- @param path string the program as the spawner would exec it
--- @param cwd string? the directory a relative interpreter is found from
--- @return string?
function M.refusal(path, cwd)
  cwd = type(cwd) == 'string' and cwd or nil
  for _ = 0, MAX_DEPTH do
    local interp, elf = interpreter(path)
    if not interp then
      return nil
    end
    if interp:sub(1, 1) ~= '/' then
      interp = (cwd or uv.cwd() or '') .. '/' .. interp
    end
    local reason = not_executable(interp)
    if reason or elf then
      return reason
    end
    path = interp
  end
  return 'ELOOP'
end

-- Where execvp(3) goes on past a candidate that does not start (glibc:
-- each of these is remembered and the next folder tried); any other error
-- ends its search.
local SEARCH_ON = { ENOENT = true, EACCES = true, ENOTDIR = true, ESTALE = true, ENODEV = true, ETIMEDOUT = true }

--- The file execvp(3) would start for the bare program `name`, as the
--- child of uv.spawn() looks it up (after its chdir, in the environment it
--- was given): each folder of `path` in turn, an empty one being the working
--- folder and a relative one taken from it, the first candidate the kernel
--- would start. Returns the candidate as execvp builds it and its full path;
--- nil when none would start (or the search would end in an error): the
--- spawner then reports its own error.
--- @param name string
--- @param path string the child's $PATH
--- @param cwd string the child's working folder, a full path
--- @return string? candidate, string? full_path
function M.search(name, path, cwd)
  for folder in (path .. ':'):gmatch('([^:]*):') do
    local candidate = folder == '' and name or (folder .. '/' .. name)
    local full = candidate:sub(1, 1) == '/' and candidate or (cwd .. '/' .. candidate)
    local stat, _, errname = uv.fs_stat(full)
    local reason = not stat and (errname or 'ENOENT')
      or remembered('x', full, stat, executable_verdict)
      or M.refusal(full, cwd)
    if not reason then
      return candidate, full
    end
    if not SEARCH_ON[reason] then
      return nil
    end
  end
  return nil
end

--- The folder a command's child starts in, as a full path (a relative
--- `cwd` is the editor's folder's), nil when the spawner must judge `cwd`.
--- @param opts table?
--- @return string?
local function child_cwd(opts)
  local cwd = opts and opts.cwd
  if cwd == nil then
    return uv.cwd()
  elseif type(cwd) ~= 'string' or cwd == '' then
    return nil
  end
  if cwd:sub(1, 1) ~= '/' then
    cwd = (uv.cwd() or '') .. '/' .. cwd
  end
  local stat = uv.fs_stat(cwd)
  return stat and stat.type == 'directory' and cwd or nil
end

--- The $PATH a command's child looks its program up in: the caller's
--- `env`'s, or the editor's unless `clear_env` empties the environment;
--- nil when it has none, or a name of `env` would make it unclear ("PATH=x"
--- also reads as PATH to getenv).
--- @param opts table?
--- @return string?
local function child_path(opts)
  local env = opts and type(opts.env) == 'table' and opts.env or nil
  if env then
    for name in pairs(env) do
      if type(name) == 'string' and name:find('^PATH=') then
        return nil
      end
    end
    if env.PATH ~= nil then
      return tostring(env.PATH)
    end
  end
  if opts and opts.clear_env then
    return nil
  end
  return uv.os_getenv('PATH')
end

--- The program the child of a spawn would start, found as execvp(3) in
--- that child finds it (from its `cwd`, on its own $PATH); nil when it
--- would start none and the spawner must report its error.
--- @param program any as the spawner is given it
--- @param opts table?
--- @return string?
function M.find_in_child(program, opts)
  local cwd = child_cwd(opts)
  if type(program) ~= 'string' or program == '' or not cwd then
    return nil
  end
  if program:find('/') then
    local full = program:sub(1, 1) == '/' and program or (cwd .. '/' .. program)
    if M.search(full, '', cwd) then
      return program
    end
    return nil
  end
  -- A child without $PATH: execvp(3) and the /bin/sh prologue would each
  -- search a default of their own. Left to the spawner.
  local path = child_path(opts)
  return path and M.search(program, path, cwd) and program or nil
end

return M
