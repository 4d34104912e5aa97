// tabwarden WebMCP polyfill: the page-facing document.modelContext for a
// Chromium without native WebMCP. Injected into the main world of every new
// document before any page script. See the package doc for the bridge design:
// the host reaches the bridge only through the private #bridge field of the
// one modelContext instance, which no script can read.
(() => {
  "use strict";
  if ("modelContext" in document) return; // native API present (or already installed)
  // Builtins are captured now, before any page script can replace them, and
  // only ever called through the captured copies.
  const G = globalThis;
  const apply = Reflect.apply, defineProperty = Object.defineProperty, freeze = Object.freeze;
  const stringify = JSON.stringify, parse = JSON.parse;
  const MapCtor = Map, mapGet = Map.prototype.get, mapSet = Map.prototype.set,
    mapDelete = Map.prototype.delete, mapHas = Map.prototype.has,
    mapForEach = Map.prototype.forEach;
  const PromiseCtor = Promise, promiseThen = Promise.prototype.then;
  const resolved = (v) => apply(promiseResolve, PromiseCtor, [v]), rejected = (e) => apply(promiseReject, PromiseCtor, [e]);
  const promiseResolve = Promise.resolve, promiseReject = Promise.reject;
  const EventCtor = Event, EventTargetCtor = EventTarget, dispatch = EventTarget.prototype.dispatchEvent;
  const addListener = EventTarget.prototype.addEventListener;
  const DOMExceptionCtor = DOMException, TypeErrorCtor = TypeError;
    const strSlice = String.prototype.slice;
  const mapSize = Object.getOwnPropertyDescriptor(Map.prototype, "size").get;
  // Strings are cut just past the host's limits, so an oversized field is
  // still rejected by the host but never costs more than this to carry.
  const CAP_NAME = 129, CAP_TEXT = 65536, CAP_SCHEMA = 65537, MAX_TOOLS = 1024;
  const str = (v, cap) => (typeof v === "string" ? (v.length > cap ? apply(strSlice, v, [0, cap]) : v) : null);

  const tools = new MapCtor(); // name -> {desc, execute}
  const calls = new MapCtor(); // host call id -> reject(cancel)
  let sealed = false;

  const fire = (target, type) => { try { apply(dispatch, target, [new EventCtor(type)]); } catch (e) {} };

  // The bridge: host-only. Ops: list, invoke, cancel. Returns JSON strings.
  const bridge = freeze(function (op, a, b, c) {
    if (op === "list") {
      const out = [];
      apply(mapForEach, tools, [(t) => { out[out.length] = t.desc; }]);
      return stringify(out);
    }
    if (op === "cancel") {
      const reject = apply(mapGet, calls, [a]);
      if (reject) { apply(mapDelete, calls, [a]); reject(); fire(api, "toolcancel"); }
      return "true";
    }
    if (op === "invoke") {
      const t = apply(mapGet, tools, [a]);
      if (!t) return resolved(stringify({ ok: false, error: "tool not found" }));
      return new PromiseCtor((resolve) => {
        const settle = (v) => { if (apply(mapHas, calls, [c])) { apply(mapDelete, calls, [c]); resolve(v); } };
        apply(mapSet, calls, [c, () => resolve(stringify({ ok: false, canceled: true }))]);
        let p;
        try {
          fire(api, "toolactivated");
          p = apply(t.execute, undefined, [parse(b), freeze({})]);
        } catch (e) {
          settle(stringify({ ok: false, error: "tool threw" }));
          return;
        }
        apply(promiseThen, resolved(p), [
          (v) => {
            let s;
            try { s = v === undefined ? "null" : stringify(v); } catch (e) { s = undefined; }
            settle(stringify(s === undefined ? { ok: false, error: "result is not JSON" } : { ok: true, result: s }));
          },
          () => settle(stringify({ ok: false, error: "tool threw" })),
        ]);
      });
    }
    return null;
  });

  class ModelContext extends EventTargetCtor {
    #bridge;
    constructor() {
      if (sealed) throw new TypeErrorCtor("Illegal constructor");
      super();
      this.#bridge = bridge;
    }
    registerTool(tool, options) {
      try {
        if (tool === null || typeof tool !== "object") throw new TypeErrorCtor("tool must be an object");
        if (apply(mapSize, tools, []) >= MAX_TOOLS) {
          throw new DOMExceptionCtor("Too many tools registered in this document", "QuotaExceededError");
        }
        const name = str(tool.name, CAP_NAME);
        const execute = tool.execute;
        if (typeof execute !== "function") throw new TypeErrorCtor("execute must be a function");
        let schema = null;
        if (tool.inputSchema !== undefined && tool.inputSchema !== null) schema = str(stringify(tool.inputSchema), CAP_SCHEMA);
        const ann = tool.annotations;
        const desc = {
          name, title: str(tool.title, CAP_TEXT), description: str(tool.description, CAP_TEXT),
          inputSchema: typeof schema === "string" ? schema : null,
          annotations: ann && typeof ann === "object"
            ? { readOnlyHint: ann.readOnlyHint === true, untrustedContentHint: ann.untrustedContentHint === true }
            : null,
        };
        const key = name === null ? {} : name; // unnamed tools still get listed (and rejected host-side)
        if (name !== null && apply(mapHas, tools, [key])) {
          throw new DOMExceptionCtor("A tool with this name is already registered", "InvalidStateError");
        }
        apply(mapSet, tools, [key, freeze({ desc, execute })]);
        const signal = options && options.signal;
        if (signal && typeof signal === "object") {
          apply(addListener, signal, ["abort", () => { apply(mapDelete, tools, [key]); fire(this, "toolchange"); }]);
        }
        fire(this, "toolchange");
        return resolved(undefined);
      } catch (e) {
        return rejected(e);
      }
    }
    unregisterTool(name) {
      apply(mapDelete, tools, [name]);
      fire(this, "toolchange");
    }
    getTools() {
      const out = [];
      apply(mapForEach, tools, [(t) => { out[out.length] = { name: t.desc.name, description: t.desc.description }; }]);
      return resolved(out);
    }
    executeTool(name, input) {
      // The page may run its own tools; this path never reaches the host.
      const t = apply(mapGet, tools, [name]);
      if (!t) return rejected(new DOMExceptionCtor("Tool not found", "NotFoundError"));
      try { return resolved(apply(t.execute, undefined, [input, freeze({})])); }
      catch (e) { return rejected(e); }
    }
  }
  for (const ev of ["toolchange", "toolactivated", "toolcancel"]) {
    let handler = null;
    defineProperty(ModelContext.prototype, "on" + ev, {
      get() { return handler; },
      set(fn) {
        if (handler) this.removeEventListener(ev, handler);
        handler = typeof fn === "function" ? fn : null;
        if (handler) apply(addListener, this, [ev, handler]);
      },
    });
  }
  const api = new ModelContext();
  sealed = true;
  freeze(ModelContext.prototype);
  freeze(ModelContext);
  freeze(api);
  defineProperty(document, "modelContext", { value: api, writable: false, enumerable: true, configurable: false });
})();
