/** Exit codes: 0 clean stop, 1 runtime/start-up failure or forced stop, 2 invalid configuration. */
export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

/** What --help says of them. */
export const EXIT_CODES_HELP =
  'Exit codes: 0 stopped cleanly (check: every check passed), 1 failure or forced stop (check: a check failed), 2 invalid configuration.';
