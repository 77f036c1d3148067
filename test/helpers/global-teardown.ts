import { rm } from 'node:fs/promises';

export default async function globalTeardown(): Promise<void> {
  const state = (globalThis as Record<string, unknown>).__testDb as
    { db: { stop(): Promise<void> }; dir: string } | undefined;
  if (!state) return;
  await state.db.stop();
  await rm(state.dir, { recursive: true, force: true });
}
