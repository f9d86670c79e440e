// The little of the `vscode` module that src/startup.ts touches outside the editor.
module.exports = {
  window: {},
  extensions: { getExtension: () => undefined },
  commands: {},
  StatusBarAlignment: { Right: 2 },
  ThemeColor: class {},
};
