-- ttyoffer.shared.title: the one rule for text from a command that the editor
-- shows (tests/nvim/test_title_rule.py holds it to the Python side's).
local title = require('ttyoffer.shared.title')

describe('of_command', function()
  it('joins, flattens control characters and truncates', function()
    eq('git push', title.of_command({ 'git', 'push' }))
    eq('a b c', title.of_command('a\nb\27c'))
    eq(40, vim.fn.strchars(title.of_command(('x'):rep(100))))
  end)
end)

describe('sanitize', function()
  it('takes out bidi overrides, separators and tag characters', function()
    eq('evil gnp.exe', title.sanitize('evil\u{202e}gnp.exe'))
    eq('a b c', title.sanitize('a\u{2028}b\u{2029}c'))
    eq('tag s', title.sanitize('tag\u{e0041}\u{e0042}s'))
  end)

  it('counts the limit in characters and marks the cut', function()
    eq('ééé…', title.sanitize(('é'):rep(10), 4))
  end)
end)
