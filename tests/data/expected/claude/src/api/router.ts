// HTTP routes. Every route is registered here; handlers live next to their domain.

import { createSession, SessionStore } from "../auth/session";

export const MAX_BODY_BYTES = 1_048_576;

type Handler = (body: unknown) => Promise<unknown>;

export function registerRoutes(routes: Map<string, Handler>, store: SessionStore): void {
  routes.set("POST /login", async (body) => createSession(store, String((body as { user: string }).user)));
  routes.set("GET /health", async () => ({ ok: true }));
}
