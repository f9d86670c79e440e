// The little of the `vscode` module that src/startup.ts and src/problems.ts touch outside
// the editor.
class Uri {
  constructor(scheme, path) {
    this.scheme = scheme;
    this.path = path;
  }
  static from({ scheme, path }) {
    return new Uri(scheme, path);
  }
  static file(path) {
    return new Uri("file", path);
  }
  toString() {
    return `${this.scheme}:${this.scheme === "file" ? "//" : ""}${this.path}`;
  }
}

module.exports = {
  window: {},
  extensions: { getExtension: () => undefined },
  commands: {},
  StatusBarAlignment: { Right: 2 },
  ThemeColor: class {
    constructor(id) {
      this.id = id;
    }
  },
  EventEmitter: class {
    constructor() {
      this.listeners = [];
      this.event = (listener) => this.listeners.push(listener);
    }
    fire(value) {
      for (const l of this.listeners) l(value);
    }
    dispose() {}
  },
  FileDecoration: class {
    constructor(badge, tooltip, color) {
      Object.assign(this, { badge, tooltip, color });
    }
  },
  Uri,
};
