#!/bin/sh
# LocalStack init hook (ready stage) for config/docker-compose.yml: creates the example's queues.
# awslocal is the AWS CLI wrapper that ships in the localstack/localstack image.
set -eu
for queue in ${WORKERLESS_EXAMPLE_QUEUES:-workerless-high workerless-low}; do
  awslocal sqs create-queue --queue-name "$queue" --attributes VisibilityTimeout=60 >/dev/null
  echo "created queue $queue"
done
