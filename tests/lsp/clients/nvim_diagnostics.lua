-- A second real LSP client: Neovim 0.7 (Debian) headless on an .onnxtxt file.
-- Run after the init.lua snippet of docs/editor.md (nvim -u SNIPPET): opens
-- $ONNXLINT_NVIM_FILE, so the snippet starts and attaches the server, waits for its
-- diagnostics and writes them, one line each, to $ONNXLINT_NVIM_OUT
-- ("line<TAB>code<TAB>message"), then quits.
local file = os.getenv("ONNXLINT_NVIM_FILE")
local out = os.getenv("ONNXLINT_NVIM_OUT")

vim.cmd("edit " .. vim.fn.fnameescape(file))
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
