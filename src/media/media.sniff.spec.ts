import { sanitiseFileName } from './media.sniff';

describe('sanitiseFileName', () => {
  it.each([
    ['../../etc/passwd', 'passwd'],
    ['C:\\Users\\me\\photo.jpg', 'photo.jpg'],
    ['a.jpg.php', 'a.jpg.php'],
    ['evil\u202egnp.exe', 'evilgnp.exe'],
    ['line\nbreak.png', 'linebreak.png'],
    ['..', 'upload'],
    ['', 'upload'],
    [undefined, 'upload'],
    ['  spaced name.png  ', 'spaced name.png'],
  ])('keeps %j as %j', (input, kept) => {
    expect(sanitiseFileName(input)).toBe(kept);
  });

  it('bounds long names to 255 characters, keeping the extension', () => {
    const kept = sanitiseFileName(`${'x'.repeat(1000)}.jpeg`);
    expect(kept).toHaveLength(255);
    expect(kept.endsWith('.jpeg')).toBe(true);
  });
});
