// One explicit frame of a page. A screencast sends frames only when Chromium draws one; a page that
// has just come back on screen (a popup closed over it) may be idle and draw nothing, and the
// viewer would keep showing the popup's last image. Capturing once guarantees a current frame.
import type { CDPSession } from "playwright-core";

/** A captured JPEG with the geometry a screencast frame carries. */
export interface CapturedFrame {
  readonly data: Buffer;
  /** The page's viewport in CSS pixels. */
  readonly pageWidth: number;
  readonly pageHeight: number;
}

/** Captures the visible viewport of the page behind `cdp` as a JPEG no larger than `max`. */
export async function captureFrame(
  cdp: CDPSession,
  max: { width: number; height: number },
  quality: number,
  viewport?: { width: number; height: number } | null,
): Promise<CapturedFrame> {
  // Always with a clip, so its scroll offset is read first: without one, a page just loaded failed
  // to capture ("Unable to capture screenshot") 1 time in 20 here, with one none did.
  const metrics = await cdp.send("Page.getLayoutMetrics");
  const vp = metrics.cssVisualViewport;
  // The page's emulated viewport when known: the metrics of a page that has only just loaded can
  // still be off (they were seen at the frame's size), and input is scaled to the viewport.
  const width = Math.max(1, Math.round(viewport?.width ?? vp.clientWidth));
  const height = Math.max(1, Math.round(viewport?.height ?? vp.clientHeight));
  // The same fit-inside scaling the screencast applies with maxWidth/maxHeight.
  const scale = Math.min(1, max.width / width, max.height / height);
  const shot = await cdp.send("Page.captureScreenshot", {
    format: "jpeg",
    quality,
    clip: { x: vp.pageX, y: vp.pageY, width, height, scale },
  });
  return { data: Buffer.from(shot.data, "base64"), pageWidth: width, pageHeight: height };
}
