#!/bin/bash
# Runs inside the official LocalStack image once it is ready (see ../../docker-compose.yml).
set -euo pipefail
# shellcheck source=../../seed-queues.sh
source /opt/workerless/seed-queues.sh
workerless_seed_queues awslocal --region us-east-1
