import { EslParser, parsePlainEvent } from './esl.client';

const event = (body: string) => {
  const inner = `Event-Name: BACKGROUND_JOB\nJob-UUID: 7f4de4bc-17d7-11dd-b7a0-db4edd065621\nJob-Command-Arg: %7Borigination_uuid%3Dx%7Duser%2F1000\nContent-Length: ${Buffer.byteLength(body)}\n\n${body}`;
  return `Content-Length: ${Buffer.byteLength(inner)}\nContent-Type: text/event-plain\n\n${inner}`;
};

describe('EslParser', () => {
  const stream =
    'Content-Type: auth/request\n\n' +
    'Content-Type: command/reply\nReply-Text: +OK accepted\n\n' +
    event('-ERR NO_ANSWER — kein Anschluss\n') +
    '\nContent-Type: command/reply\nReply-Text: +OK Job-UUID: 1\nJob-UUID: 1\n\n';

  it('frames messages however the bytes are split, counting Content-Length in bytes', () => {
    const bytes = Buffer.from(stream);
    for (let size = 1; size <= bytes.length; size += size < 8 ? 1 : 13) {
      const parser = new EslParser();
      const messages = [];
      for (let i = 0; i < bytes.length; i += size) messages.push(...parser.push(bytes.subarray(i, i + size)));
      expect(messages.map((m) => m.headers['Content-Type'])).toEqual([
        'auth/request',
        'command/reply',
        'text/event-plain',
        'command/reply',
      ]);
      expect(messages[3].headers['Reply-Text']).toBe('+OK Job-UUID: 1');
      expect(parsePlainEvent(messages[2].body)).toEqual({
        headers: {
          'Event-Name': 'BACKGROUND_JOB',
          'Job-UUID': '7f4de4bc-17d7-11dd-b7a0-db4edd065621',
          'Job-Command-Arg': '{origination_uuid=x}user/1000',
          'Content-Length': String(Buffer.byteLength('-ERR NO_ANSWER — kein Anschluss\n')),
        },
        body: '-ERR NO_ANSWER — kein Anschluss\n',
      });
    }
  });

  it('refuses a stream that is not the event socket protocol', () => {
    expect(() => new EslParser().push(Buffer.from('Content-Length: -5\n\n'))).toThrow(/Content-Length/);
    expect(() => new EslParser().push(Buffer.alloc(17 * 1024 * 1024, 0x41))).toThrow(/oversized/);
  });
});
