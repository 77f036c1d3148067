/** A click-to-call: ring the user's extension, then connect it to the destination. */
export interface OriginateCall {
  /** Pre-assigned UUID of the call (the caller's leg); it names the call record later. */
  callUuid: string;
  /** The caller's extension and phone number (digit strings). */
  extension: string;
  phoneNumber: string;
  /** What the caller asked for: its own number or extension, and the number to call. */
  source: string;
  destination: string;
}

/** The port to the PBX that places calls. */
export interface CallOriginator {
  /** Resolves once the PBX accepted the call; throws UNAVAILABLE when the PBX cannot be reached. */
  originate(call: OriginateCall): Promise<void>;
  close(): Promise<void>;
}
