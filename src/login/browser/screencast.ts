// The screencast of the confined browser: the page on screen is the top of a stack (the main page,
// then window.open popups over it), streamed as JPEG frames on its own CDP session. A popup opening
// or closing switches the stream; switches run one at a time, in order. Nothing reaches the viewer
// before the login page itself is up (show()): the blank page a navigation starts from is never sent.
import type { BrowserContext, CDPSession, Page } from "playwright-core";
import { traceLogin } from "../trace.js";
import { captureFrame } from "./capture-frame.js";
import { type BrowserHooks, errorMessage } from "./hooks.js";
import { jpegSize } from "./jpeg-size.js";

const JPEG_QUALITY = 60;

/** One screencast frame: a JPEG of the page currently shown (the main page or a popup). */
export interface ScreencastFrame {
  /** JPEG bytes. */
  data: Buffer;
  /** Image size in pixels: the coordinate space of input sent back. */
  width: number;
  height: number;
  /** The page's viewport in CSS pixels. */
  pageWidth: number;
  pageHeight: number;
  /** Whether the frame shows a window.open popup rather than the main page. */
  popup: boolean;
}

/** What input coordinates are relative to: the last frame sent. */
export interface FrameGeometry {
  readonly width: number;
  readonly height: number;
  readonly pageWidth: number;
  readonly pageHeight: number;
}

/** Where frames go, and who hears about popups. */
export interface ScreencastOutput {
  onFrame(frame: ScreencastFrame): void;
  /** Whether a window.open popup is now shown (called when that changes). */
  onPopupChange?(open: boolean): void;
}

/** The screencast currently streamed: one page on its own CDP session. */
interface Cast {
  readonly page: Page;
  readonly cdp: CDPSession;
  /** Whether a frame of this cast has reached onFrame. */
  shown: boolean;
}

/** Streams the top page of one browser context; the first page added is the main page. */
export class Screencast {
  /** Open pages, the main page first; the last one is on screen (popups stack on top). */
  private readonly pages: Page[] = [];
  private cast: Cast | undefined;
  private frame: FrameGeometry | undefined;
  private switching: Promise<void> = Promise.resolve();
  private popupShown = false;
  /** Whether frames reach the viewer yet (see show()). */
  private live = false;
  /**
   * Whether screencast frames may follow: once a captured frame went out (or capturing failed).
   * Until then a frame drawn before the login page's first paint (still the blank page) could
   * overtake the capture.
   */
  private primed = false;

  constructor(
    private readonly ctx: BrowserContext,
    private readonly main: Page,
    private readonly frameMax: { width: number; height: number },
    private readonly out: ScreencastOutput,
    private readonly hooks: BrowserHooks,
  ) {
    this.track(main);
  }

  /** The geometry of the last frame sent (input is scaled from it). */
  get geometry(): FrameGeometry | undefined {
    return this.frame;
  }

  /** The page input goes to: the one on screen, else the top of the stack. */
  onScreen(): Page | undefined {
    return this.cast?.page ?? this.pages.at(-1);
  }

  /**
   * The login page is up (its DOMContentLoaded, or a bound): frames flow from now on, the first
   * one an explicit capture of the page on screen, so the viewer's first frame is never blank.
   */
  show(): void {
    if (this.live || this.hooks.closing()) return;
    this.live = true;
    const cast = this.cast;
    if (cast) this.capture(cast);
  }

  /** A popup opened: it goes on top of the stack and on screen. */
  push(page: Page): void {
    this.live = true;
    this.track(page);
    this.setPopupShown(this.pages.length > 1);
    this.schedule();
  }

  /** Starts streaming the top page; resolves once every switch asked for so far is done. */
  start(): Promise<void> {
    this.schedule();
    return this.switching;
  }

  private track(page: Page): void {
    this.pages.push(page);
    page.once("close", () => {
      const i = this.pages.indexOf(page);
      if (i >= 0) this.pages.splice(i, 1);
      if (this.hooks.closing()) return;
      if (page === this.main) this.hooks.warn("login browser main page closed itself");
      this.setPopupShown(this.pages.length > 1);
      this.schedule();
    });
  }

  private setPopupShown(open: boolean): void {
    if (open === this.popupShown) return;
    this.popupShown = open;
    const cb = this.out.onPopupChange;
    if (cb) this.hooks.safely(() => cb(open));
  }

  /** Points the screencast at the top page, after any switch already under way. */
  private schedule(): void {
    this.switching = this.switching
      .then(() => this.castTop())
      .catch((err: unknown) => {
        if (!this.hooks.closing())
          this.hooks.warn("login browser screencast switch failed", { error: errorMessage(err) });
      });
  }

  private async castTop(): Promise<void> {
    const top = this.pages.at(-1);
    if (this.hooks.closing() || !top || this.cast?.page === top) return;
    const prev = this.cast;
    this.cast = undefined;
    if (prev && !prev.page.isClosed()) {
      await prev.cdp.send("Page.stopScreencast").catch(() => {});
      await prev.cdp.detach().catch(() => {});
    }
    if (top.isClosed()) return; // its close event schedules the next switch
    const cdp = await this.ctx.newCDPSession(top);
    const cast: Cast = { page: top, cdp, shown: false };
    this.cast = cast;
    cdp.on("Page.screencastFrame", (f) => {
      // Chromium sends the next frame only after this ack, so ack every one, even those dropped.
      cdp.send("Page.screencastFrameAck", { sessionId: f.sessionId }).catch(() => {});
      if (this.primed)
        this.emitFrame(cast, Buffer.from(f.data, "base64"), f.metadata.deviceWidth, f.metadata.deviceHeight);
    });
    await cdp.send("Page.startScreencast", {
      format: "jpeg",
      quality: JPEG_QUALITY,
      maxWidth: this.frameMax.width,
      maxHeight: this.frameMax.height,
      everyNthFrame: 1,
    });
    // An idle page may draw nothing for a new screencast: make sure the viewer gets a current
    // frame of the page now on screen (once frames flow at all, see show()).
    if (this.live) this.capture(cast);
  }

  /** Sends one captured frame of `cast` unless a screencast frame got there first; never awaited by a switch. */
  private capture(cast: Cast): void {
    captureFrame(cast.cdp, this.frameMax, JPEG_QUALITY, cast.page.viewportSize()).then(
      (shot) => {
        if (!cast.shown) this.emitFrame(cast, shot.data, shot.pageWidth, shot.pageHeight);
        this.primed = true;
      },
      (err: unknown) => {
        this.primed = true;
        if (this.cast === cast && !this.hooks.closing() && !cast.page.isClosed())
          this.hooks.warn("login browser could not capture a frame", { error: errorMessage(err) });
      },
    );
  }

  /** Sends a frame of `cast` to the viewer, if that cast is still the one on screen. */
  private emitFrame(cast: Cast, data: Buffer, pageWidth: number | undefined, pageHeight: number | undefined): void {
    if (this.cast !== cast || this.hooks.closing() || !this.live) return;
    const size = jpegSize(data);
    if (!size) {
      this.hooks.warn("login browser dropped an unreadable frame");
      return;
    }
    const geometry: FrameGeometry = {
      width: size.width,
      height: size.height,
      // The page's emulated viewport, which input is scaled to, when known: a frame's own
      // metadata was seen giving the frame's size instead for a page that had only just loaded.
      pageWidth: cast.page.viewportSize()?.width ?? pageWidth ?? size.width,
      pageHeight: cast.page.viewportSize()?.height ?? pageHeight ?? size.height,
    };
    if (!this.frame) traceLogin("first_frame_sent");
    this.frame = geometry;
    cast.shown = true;
    const popup = cast.page !== this.main;
    this.hooks.safely(() => this.out.onFrame({ data, ...geometry, popup }));
  }
}
