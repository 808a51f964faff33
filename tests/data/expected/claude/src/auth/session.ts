// Session handling for logged-in customers.

export interface Session {
  id: string;
  userId: string;
  expiresAt: number;
}

export class SessionStore {
  private sessions = new Map<string, Session>();

  get(id: string): Session | undefined {
    return this.sessions.get(id);
  }

  put(session: Session): void {
    this.sessions.set(session.id, session);
  }
}

export function createSession(store: SessionStore, userId: string, ttlMs = 3_600_000): Session {
  const session = { id: crypto.randomUUID(), userId, expiresAt: Date.now() + ttlMs };
  store.put(session);
  return session;
}

export function refreshToken(store: SessionStore, id: string, ttlMs = 3_600_000): Session | undefined {
  const session = store.get(id);
  if (!session) return undefined;
  session.expiresAt = Date.now() + ttlMs;
  return session;
}
