# shellcheck shell=bash
# The demo/test queues, defined once. Sourced by localstack.sh (host mode, aws CLI from the venv) and by
# init/ready.d/seed.sh (inside the official image, awslocal). Usage: workerless_seed_queues <aws command...>
# Re-running is harmless: CreateQueue with the same attributes returns the existing queue.

workerless_seed_queues() {
  local -a aws=("$@")
  local name url dlq_url dlq_arn

  for name in workerless-demo-high workerless-demo-low; do
    url=$("${aws[@]}" sqs create-queue --queue-name "$name" --query QueueUrl --output text)
    echo "seeded $name $url"
  done

  dlq_url=$("${aws[@]}" sqs create-queue --queue-name workerless-demo-dlq --query QueueUrl --output text)
  dlq_arn=$("${aws[@]}" sqs get-queue-attributes --queue-url "$dlq_url" --attribute-names QueueArn \
    --query Attributes.QueueArn --output text)
  echo "seeded workerless-demo-dlq $dlq_url"

  # RedrivePolicy is itself a JSON string inside the Attributes map, hence the escaped quotes.
  url=$("${aws[@]}" sqs create-queue --queue-name workerless-demo-default --query QueueUrl --output text \
    --attributes "{\"RedrivePolicy\":\"{\\\"deadLetterTargetArn\\\":\\\"${dlq_arn}\\\",\\\"maxReceiveCount\\\":\\\"3\\\"}\"}")
  echo "seeded workerless-demo-default $url (DLQ workerless-demo-dlq after 3 receives)"

  url=$("${aws[@]}" sqs create-queue --queue-name workerless-demo.fifo --query QueueUrl --output text \
    --attributes FifoQueue=true)
  echo "seeded workerless-demo.fifo $url"

  url=$("${aws[@]}" sqs create-queue --queue-name workerless-demo-short-vt --query QueueUrl --output text \
    --attributes VisibilityTimeout=5)
  echo "seeded workerless-demo-short-vt $url (VisibilityTimeout 5 s)"
}
