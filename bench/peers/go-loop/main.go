// The benchmark's Go peer: the original Workerless's shape on aws-sdk-go-v2. C goroutine workers, each:
// ReceiveMessage (up to --batch-size, 1 s long poll) -> a minimal {"Records":[...]} event -> Invoke
// (RequestResponse) -> DeleteMessage / DeleteMessageBatch. One HTTP transport that keeps 2 idle sockets per worker.
//
//	go-loop --queue-url URL --function NAME [--concurrency C] [--batch-size B]
//
// Endpoints, region and credentials come from the environment (AWS_ENDPOINT_URL, AWS_REGION, ...), as for the
// Node consumers. Prints {"msg":"ready"} once its clients have made their first calls. On SIGUSR2 it writes
// {"seq":n,"calls":{op:count},"heap":{"peakUsedMiB":..,"usedMiB":..}} to $BENCH_CALLS_FILE, the format of
// bench/support/sdk-call-counter.ts (the Go heap is runtime.MemStats.HeapAlloc). Stops on SIGTERM/SIGINT: no new
// receives, the messages in hand are finished, exit 0.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// counting wraps the transport and counts requests by operation, as the Node peers' preload does.
type counting struct {
	next  http.RoundTripper
	mu    sync.Mutex
	calls map[string]int
}

var invocationPath = regexp.MustCompile(`/functions/[^/]+/invocations`)

func (c *counting) RoundTrip(req *http.Request) (*http.Response, error) {
	op := req.Method + " " + req.URL.Path
	if target := req.Header.Get("X-Amz-Target"); target != "" {
		op = target[strings.IndexByte(target, '.')+1:]
	} else if invocationPath.MatchString(req.URL.Path) {
		op = "Invoke"
	}
	c.mu.Lock()
	c.calls[op]++
	c.mu.Unlock()
	return c.next.RoundTrip(req)
}

type record struct {
	MessageID         string            `json:"messageId"`
	ReceiptHandle     string            `json:"receiptHandle"`
	Body              string            `json:"body"`
	Attributes        map[string]string `json:"attributes"`
	MessageAttributes map[string]string `json:"messageAttributes"`
	Md5OfBody         string            `json:"md5OfBody"`
	EventSource       string            `json:"eventSource"`
	EventSourceARN    string            `json:"eventSourceARN"`
	AwsRegion         string            `json:"awsRegion"`
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func main() {
	queueURL := flag.String("queue-url", "", "queue URL")
	function := flag.String("function", "", "function name")
	concurrency := flag.Int("concurrency", 10, "workers")
	batchSize := flag.Int("batch-size", 1, "messages per receive and invocation (1-10)")
	flag.Parse()
	if *queueURL == "" || *function == "" || *concurrency < 1 || *batchSize < 1 || *batchSize > 10 {
		fmt.Fprintln(os.Stderr, "usage: go-loop --queue-url URL --function NAME [--concurrency C] [--batch-size B]")
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	counter := &counting{calls: map[string]int{}}
	httpClient := awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConns = 2 * *concurrency
		t.MaxIdleConnsPerHost = 2 * *concurrency
	})
	counter.next = httpClient.GetTransport()
	cfg, err := config.LoadDefaultConfig(context.Background(),
		config.WithHTTPClient(&http.Client{Transport: counter}))
	if err != nil {
		fmt.Fprintln(os.Stderr, "config:", err)
		os.Exit(1)
	}
	sqsClient := sqs.NewFromConfig(cfg)
	lambdaClient := lambda.NewFromConfig(cfg)

	attrs, err := sqsClient.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: queueURL, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "GetQueueAttributes:", err)
		os.Exit(1)
	}
	queueArn := attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	if _, err := lambdaClient.Invoke(ctx, &lambda.InvokeInput{FunctionName: function, InvocationType: lambdatypes.InvocationTypeDryRun}); err != nil {
		fmt.Fprintln(os.Stderr, "DryRun:", err)
		os.Exit(1)
	}
	region := cfg.Region

	// Registered before the ready line: the benchmark asks for its first snapshot right after it.
	usr2 := make(chan os.Signal, 1)
	signal.Notify(usr2, syscall.SIGUSR2)
	go snapshots(counter, usr2)
	fmt.Printf("{\"msg\":\"ready\",\"pid\":%d,\"concurrency\":%d}\n", os.Getpid(), *concurrency)

	handle := func(messages []sqstypes.Message) error {
		records := make([]record, len(messages))
		for i, m := range messages {
			records[i] = record{
				MessageID: deref(m.MessageId), ReceiptHandle: deref(m.ReceiptHandle), Body: deref(m.Body),
				Attributes: map[string]string{}, MessageAttributes: map[string]string{}, Md5OfBody: deref(m.MD5OfBody),
				EventSource: "aws:sqs", EventSourceARN: queueArn, AwsRegion: region,
			}
		}
		payload, err := json.Marshal(map[string][]record{"Records": records})
		if err != nil {
			return err
		}
		// The messages in hand are finished even after SIGTERM: a context that is not cancelled.
		out, err := lambdaClient.Invoke(context.Background(), &lambda.InvokeInput{
			FunctionName: function, InvocationType: lambdatypes.InvocationTypeRequestResponse, Payload: payload,
		})
		if err != nil {
			return err
		}
		if out.FunctionError != nil {
			return errors.New("function error: " + *out.FunctionError)
		}
		if len(messages) == 1 {
			_, err = sqsClient.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: queueURL, ReceiptHandle: messages[0].ReceiptHandle})
			return err
		}
		entries := make([]sqstypes.DeleteMessageBatchRequestEntry, len(messages))
		for i, m := range messages {
			entries[i] = sqstypes.DeleteMessageBatchRequestEntry{Id: new(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle}
		}
		_, err = sqsClient.DeleteMessageBatch(context.Background(), &sqs.DeleteMessageBatchInput{QueueUrl: queueURL, Entries: entries})
		return err
	}

	var workers sync.WaitGroup
	for range *concurrency {
		workers.Go(func() {
			for ctx.Err() == nil {
				received, err := sqsClient.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
					QueueUrl: queueURL, MaxNumberOfMessages: int32(*batchSize), WaitTimeSeconds: 1,
				})
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					fmt.Fprintln(os.Stderr, "receive failed:", err)
					time.Sleep(time.Second)
					continue
				}
				if len(received.Messages) == 0 {
					continue
				}
				if err := handle(received.Messages); err != nil {
					fmt.Fprintln(os.Stderr, "messages failed:", err)
				}
			}
		})
	}
	workers.Wait()
}

// snapshots writes the call counts and the heap to $BENCH_CALLS_FILE on every SIGUSR2; the heap is sampled every
// 250 ms for its peak, as the Node preload samples V8's.
func snapshots(counter *counting, usr2 <-chan os.Signal) {
	file := os.Getenv("BENCH_CALLS_FILE")
	tick := time.NewTicker(250 * time.Millisecond)
	var peak uint64
	var stats runtime.MemStats
	sample := func() uint64 {
		runtime.ReadMemStats(&stats)
		peak = max(peak, stats.HeapAlloc)
		return stats.HeapAlloc
	}
	const mib = 1 << 20
	for seq := 1; ; {
		select {
		case <-tick.C:
			sample()
		case <-usr2:
			used := sample()
			counter.mu.Lock()
			body, _ := json.Marshal(map[string]any{
				"seq": seq, "calls": counter.calls,
				"heap": map[string]float64{"peakUsedMiB": float64(peak) / mib, "usedMiB": float64(used) / mib},
			})
			counter.mu.Unlock()
			if file != "" {
				_ = os.WriteFile(file+".tmp", body, 0o644)
				_ = os.Rename(file+".tmp", file)
			}
			seq++
		}
	}
}
