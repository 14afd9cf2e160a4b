// The Porcupine side of benchmarks/history_check.py --vs-porcupine: checks each history
// file written by dw_testing's dump_jsonl with Porcupine (built against a checkout named by
// the benchmark; nothing of Porcupine is kept in this repository) and prints, per file, one
// JSON line: parse and check CPU seconds and the verdict.
//
// The model is the checker's: one key's state is absent or a value; put, put_if_absent, get
// and delete; histories are partitioned by key. A call that raised returns at +inf with an
// unknown result: placed last it changes nothing, so it may as well not have applied.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"syscall"
	"time"

	"github.com/anishathalye/porcupine"
)

type row struct {
	Op     string          `json:"op"`
	Key    string          `json:"key"`
	Value  *string         `json:"value"`
	Result json.RawMessage `json:"result"`
	Call   int64           `json:"call"`
	Ret    *int64          `json:"ret"`
}

type input struct {
	op    string
	key   string
	value string
}

type output struct {
	unknown bool
	present bool   // get: a value was read; put_if_absent: told True
	value   string // get: the value read
}

type state struct {
	present bool
	value   string
}

func cpu() float64 {
	var usage syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &usage)
	return float64(usage.Utime.Nano()+usage.Stime.Nano()) / 1e9
}

func parse(path string) []porcupine.Operation {
	file, err := os.Open(path)
	if err != nil {
		panic(err)
	}
	defer file.Close()
	scanner := bufio.NewScanner(file)
	scanner.Buffer(make([]byte, 1<<20), 1<<26)
	var ops []porcupine.Operation
	for scanner.Scan() {
		line := scanner.Bytes()
		if len(line) == 0 {
			continue
		}
		var r row
		if err := json.Unmarshal(line, &r); err != nil {
			panic(err)
		}
		in := input{op: r.Op, key: r.Key}
		if r.Value != nil {
			in.value = *r.Value
		}
		out := output{}
		ret := int64(math.MaxInt64)
		if r.Ret == nil {
			out.unknown = true
		} else {
			ret = *r.Ret
			switch r.Op {
			case "get":
				var seen *string
				if err := json.Unmarshal(r.Result, &seen); err != nil {
					panic(err)
				}
				if seen != nil {
					out.present, out.value = true, *seen
				}
			case "put_if_absent":
				var told bool
				if err := json.Unmarshal(r.Result, &told); err != nil {
					panic(err)
				}
				out.present = told
			}
		}
		ops = append(ops, porcupine.Operation{Input: in, Call: r.Call, Output: out, Return: ret})
	}
	if err := scanner.Err(); err != nil {
		panic(err)
	}
	return ops
}

var model = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		index := map[string]int{}
		var parts [][]porcupine.Operation
		for _, op := range history {
			key := op.Input.(input).key
			n, ok := index[key]
			if !ok {
				n = len(parts)
				index[key] = n
				parts = append(parts, nil)
			}
			parts[n] = append(parts[n], op)
		}
		return parts
	},
	Init: func() interface{} { return state{} },
	Step: func(s, i, o interface{}) (bool, interface{}) {
		st, in, out := s.(state), i.(input), o.(output)
		switch in.op {
		case "put":
			return true, state{true, in.value}
		case "delete":
			return true, state{}
		case "get":
			if out.unknown {
				return true, st
			}
			return out.present == st.present && (!st.present || out.value == st.value), st
		default: // put_if_absent
			if out.unknown {
				if !st.present {
					return true, state{true, in.value}
				}
				return true, st
			}
			if out.present {
				return !st.present, state{true, in.value}
			}
			return st.present, st
		}
	},
	Equal: func(a, b interface{}) bool { return a.(state) == b.(state) },
}

func main() {
	timeout := 600 * time.Second
	for _, path := range os.Args[1:] {
		started := cpu()
		ops := parse(path)
		parsed := cpu()
		result := porcupine.CheckOperationsTimeout(model, ops, timeout)
		checked := cpu()
		verdict := map[porcupine.CheckResult]string{
			porcupine.Ok: "ok", porcupine.Illegal: "violation", porcupine.Unknown: "unknown",
		}[result]
		fmt.Printf("{\"parse\": %f, \"check\": %f, \"verdict\": %q}\n",
			parsed-started, checked-parsed, verdict)
	}
}
