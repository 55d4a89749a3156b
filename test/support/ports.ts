import net, { type AddressInfo } from "node:net";

/** A TCP port on 127.0.0.1 that was free a moment ago (the OS picks it; the caller binds it next). */
export async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve));
  const { port } = srv.address() as AddressInfo;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}
