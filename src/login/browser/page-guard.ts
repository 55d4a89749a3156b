// Script run in every frame of the confined browser before the page's own scripts.
//
// File pickers: the user must never be able to pick a file from the broker's disk. The guarantee
// is that the browser intercepts every file chooser (ConfinedBrowser listens for Playwright's
// "filechooser" event, which turns on CDP Page.setInterceptFileChooserDialog) and never sets a
// file, and headless Chromium has no native dialog anyway. This script is defence in depth that
// also keeps pages from waiting on a picker: clicks on <input type=file> (direct, via a <label>, or
// programmatic .click() on a detached input) are cancelled, showPicker() on one throws, and the File
// System Access pickers are removed.
export const PAGE_GUARD_SCRIPT = `(() => {
  const isFileInput = (el) => el instanceof HTMLInputElement && String(el.type).toLowerCase() === "file";
  const refuse = () => new DOMException("File selection is disabled in this sign-in window", "NotAllowedError");
  // Capture phase on window runs before any listener a page can add (this script runs first).
  window.addEventListener("click", (e) => { const t = e.composedPath()[0]; if (isFileInput(t)) e.preventDefault(); }, true);
  const click = HTMLElement.prototype.click;
  Object.defineProperty(HTMLElement.prototype, "click", { configurable: false, writable: false, value: function () { if (isFileInput(this)) return; return click.call(this); } });
  const showPicker = HTMLInputElement.prototype.showPicker;
  if (typeof showPicker === "function") {
    Object.defineProperty(HTMLInputElement.prototype, "showPicker", { configurable: false, writable: false, value: function () { if (isFileInput(this)) throw refuse(); return showPicker.call(this); } });
  }
  for (const name of ["showOpenFilePicker", "showSaveFilePicker", "showDirectoryPicker"]) {
    if (name in window) Object.defineProperty(window, name, { configurable: false, writable: false, value: () => Promise.reject(refuse()) });
  }
})();`;
