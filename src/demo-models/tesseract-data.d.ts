/** The English traineddata package for tesseract.js (it ships no types). */
declare module '@tesseract.js-data/eng' {
  export const code: string;
  export const gzip: boolean;
  export const langPath: string;
}
