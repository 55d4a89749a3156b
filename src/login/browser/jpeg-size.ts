// The pixel size of a JPEG, read from its start-of-frame header. Screencast frames carry the page's
// CSS size in their metadata but not the image's, and the two differ whenever the frame is scaled.

/** Width and height in image pixels, or undefined if `buf` is not a well-formed baseline/progressive JPEG. */
export function jpegSize(buf: Buffer): { width: number; height: number } | undefined {
  if (buf.length < 4 || buf[0] !== 0xff || buf[1] !== 0xd8) return undefined;
  let i = 2;
  while (i + 3 < buf.length) {
    if (buf[i] !== 0xff) return undefined;
    const marker = buf[i + 1] ?? 0;
    if (marker === 0xff) {
      i++; // fill byte
      continue;
    }
    // Stand-alone markers carry no length.
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd8)) {
      i += 2;
      continue;
    }
    if (marker === 0xd9 || marker === 0xda) return undefined; // end of image / start of scan before any frame header
    const len = buf.readUInt16BE(i + 2);
    if (len < 2) return undefined;
    // SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC).
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      if (i + 9 > buf.length) return undefined;
      const height = buf.readUInt16BE(i + 5);
      const width = buf.readUInt16BE(i + 7);
      return width > 0 && height > 0 ? { width, height } : undefined;
    }
    i += 2 + len;
  }
  return undefined;
}
