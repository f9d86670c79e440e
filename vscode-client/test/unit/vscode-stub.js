// The little of the `vscode` module that src/startup.ts and src/problems.ts touch outside
// the editor.
module.exports = {
  window: {},
  extensions: { getExtension: () => undefined },
  commands: {},
  StatusBarAlignment: { Right: 2 },
  ThemeColor: class {},
  EventEmitter: class {
    event = () => undefined;
    fire() {}
    dispose() {}
  },
};
