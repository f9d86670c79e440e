-- A second real LSP client: Neovim 0.7 (Debian) headless on an .onnxtxt file.
-- Run with the init.lua snippet of docs/editor.md as the user's init.lua and
-- $ONNXLINT_NVIM_FILE on Neovim's command line (opened if it is not): the snippet
-- starts and attaches the server; this waits for its diagnostics and writes them, one
-- line each, to $ONNXLINT_NVIM_OUT ("line<TAB>code<TAB>message"), then quits.
local file = os.getenv("ONNXLINT_NVIM_FILE")
local out = os.getenv("ONNXLINT_NVIM_OUT")

if vim.fn.fnamemodify(vim.api.nvim_buf_get_name(0), ":p") ~= vim.fn.fnamemodify(file, ":p") then
  vim.cmd("edit " .. vim.fn.fnameescape(file))
end
local ok = vim.wait(60000, function() return #vim.diagnostic.get(0) > 0 end, 50)
local fh = io.open(out, "w")
if ok then
  for _, d in ipairs(vim.diagnostic.get(0)) do
    fh:write(string.format("%d\t%s\t%s\n", d.lnum, tostring(d.code), (d.message:gsub("\n", " "))))
  end
else
  fh:write("TIMEOUT\n")
end
fh:close()
vim.cmd("qa!")
