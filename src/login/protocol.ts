import { z } from "zod";

// The live-view WebSocket protocol. Every client message is validated strictly; anything else is dropped.

const coord = z.number().finite().min(0).max(10_000);

/** Messages the viewer's page sends. */
export const clientMessage = z.discriminatedUnion("type", [
  z
    .object({
      type: z.literal("mouse"),
      kind: z.enum(["move", "down", "up"]),
      x: coord,
      y: coord,
      button: z.enum(["left", "right", "middle"]).optional(),
      clickCount: z.number().int().min(1).max(3).optional(),
    })
    .strict(),
  z
    .object({
      type: z.literal("wheel"),
      x: coord,
      y: coord,
      deltaX: z.number().finite().min(-5000).max(5000),
      deltaY: z.number().finite().min(-5000).max(5000),
    })
    .strict(),
  z.object({ type: z.literal("key"), kind: z.enum(["down", "up"]), key: z.string().min(1).max(32) }).strict(),
  z.object({ type: z.literal("text"), text: z.string().min(1).max(2000) }).strict(),
  z
    .object({ type: z.literal("paste"), fields: z.record(z.string().regex(/^[a-z][a-z0-9_]*$/), z.string().max(8192)) })
    .strict(),
  z.object({ type: z.literal("done") }).strict(),
  z.object({ type: z.literal("cancel") }).strict(),
  z
    .object({
      type: z.literal("viewport"),
      width: z.number().int().min(200).max(4000),
      height: z.number().int().min(200).max(4000),
    })
    .strict(),
]);
export type ClientMessage = z.infer<typeof clientMessage>;

/** The states the page's status line shows. */
export type LoginState = "loading" | "waiting" | "captured" | "expired" | "cancelled" | "failed" | "refused";

/** Messages the broker sends to the page. */
export type ServerMessage =
  | { type: "status"; state: LoginState; message: string }
  | { type: "frame"; data: string; width: number; height: number; popup: boolean }
  | { type: "paste_form"; instructions: string; fields: { name: string; label: string; secret: boolean }[] }
  | { type: "strategy"; strategy: "paste" | "cookie" | "oauth" | "device"; service: string; browser: boolean }
  /** A device login's code: shown only on this private page, to the user the link was minted for. */
  | { type: "device_code"; verificationUri: string; verificationUriComplete?: string; userCode: string };
