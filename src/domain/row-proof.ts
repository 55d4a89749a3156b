// What a decision read, named so that a later statement can prove it unchanged: the kinds of rows
// a warm mcp_call is decided from, each with its version when read. PostgreSQL checks them
// (src/topology/postgres/row-proof.ts); this file is only the shape the call path passes down.

/** What a warm mcp_call's decision read, each with the version it had when read (null: no such row). */
export type RowProof =
  /** The MCP session record (mcp_sessions), live. */
  | { readonly kind: "session"; readonly id: string; readonly version: string | null }
  /** The thread's turns (turn_threads). */
  | { readonly kind: "turn"; readonly threadKey: string; readonly version: string | null }
  /** Every connection of one owner for one service in one team, any scope or status. */
  | {
      readonly kind: "own";
      readonly teamId: string;
      readonly ownerUserId: string;
      readonly service: string;
      readonly version: string | null;
    }
  /** The tool's pin (tool_pins). */
  | {
      readonly kind: "pin";
      readonly teamId: string;
      readonly service: string;
      readonly tool: string;
      readonly version: string | null;
    };
