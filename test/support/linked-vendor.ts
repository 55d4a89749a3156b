import { Client, InMemoryTransport } from "@modelcontextprotocol/client";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";

/**
 * A real SDK server that announces `tools/list_changed`, and a broker-side client connected to it
 * over linked in-memory transports: what the pin tests watch as a live vendor. `close` ends both.
 */
export async function linkedVendor(): Promise<{ client: Client; server: Server; close(): Promise<void> }> {
  const server = new Server({ name: "vendor", version: "1" }, { capabilities: { tools: { listChanged: true } } });
  const client = new Client({ name: "broker", version: "1" });
  const [a, b] = InMemoryTransport.createLinkedPair();
  await server.connect(b);
  await client.connect(a);
  return {
    client,
    server,
    close: async () => {
      await client.close();
      await server.close();
    },
  };
}
