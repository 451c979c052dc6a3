// The demo function: pretends to work on each record for 20 ms and returns nothing (the batch succeeded).
export const handler = async (event) => {
  for (const record of event.Records ?? []) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    console.error(`demo function: ${record.eventSourceARN.split(':').pop()} ${record.body}`);
  }
};
