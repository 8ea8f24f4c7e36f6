/** The few chrome.* APIs the offscreen document uses (the project does not depend on @types/chrome). */
declare namespace chrome.runtime {
  function getURL(path: string): string;
  const onMessage: {
    addListener(listener: (message: any, sender: unknown, sendResponse: (response: unknown) => void) => boolean | void): void;
  };
}
