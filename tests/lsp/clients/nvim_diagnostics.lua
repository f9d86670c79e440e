-- A second real LSP client: Neovim 0.7 (Debian) headless on an .onnxtxt file.
-- Starts `python -m onnxlint lsp`, attaches it to the buffer, waits for the first
-- non-empty publishDiagnostics and writes what it received, one line per diagnostic,
-- to $ONNXLINT_NVIM_OUT ("line<TAB>code<TAB>message"), then quits.
local python = os.getenv("ONNXLINT_PYTHON")
local file = os.getenv("ONNXLINT_NVIM_FILE")
local out = os.getenv("ONNXLINT_NVIM_OUT")
local received = nil

vim.cmd("edit " .. vim.fn.fnameescape(file))
local client_id = vim.lsp.start_client({
  name = "onnxlint",
  cmd = { python, "-m", "onnxlint", "lsp" },
  root_dir = vim.fn.fnamemodify(file, ":h"),
  handlers = {
    ["textDocument/publishDiagnostics"] = function(_, result)
      if result and result.uri == vim.uri_from_fname(file) and #result.diagnostics > 0 then
        received = result.diagnostics
      end
    end,
  },
})
vim.lsp.buf_attach_client(0, client_id)
local ok = vim.wait(60000, function() return received ~= nil end, 50)
local fh = io.open(out, "w")
if ok then
  for _, d in ipairs(received) do
    fh:write(string.format("%d\t%s\t%s\n", d.range.start.line, tostring(d.code), d.message:gsub("\n", " ")))
  end
else
  fh:write("TIMEOUT\n")
end
fh:close()
vim.lsp.stop_client(client_id)
vim.cmd("qa!")
