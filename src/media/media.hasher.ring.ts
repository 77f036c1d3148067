/**
 * The layout of the hash ring shared by the request's thread (media.hasher.ts) and the hashing
 * worker (media.hasher.worker.ts): records `[id, length][bytes]`, 8-byte aligned.
 *
 * Control words (Int32, in their own small SharedArrayBuffer):
 * WRITE / READ: positions in [0, 2 * RING_BYTES) (the ring's offset is position % RING_BYTES;
 * counting to twice its size tells full from empty); SLEEPING: the worker waits on WRITE;
 * WANT: the request's thread waits for room.
 */
export const WRITE = 0;
export const READ = 1;
export const SLEEPING = 2;
export const WANT = 3;

/** Record lengths below zero are commands. */
export const END = -1;
export const DROP = -2;
/** The rest of the ring is unused; the next record is at its start. */
export const WRAP = -3;
export const HEADER = 8;
