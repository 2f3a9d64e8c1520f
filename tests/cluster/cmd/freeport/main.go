// Command freeport prints N TCP ports on 127.0.0.1 that were free a moment ago (the
// kernel picks them: listen on port 0, note the port, close), one per line. All N
// listeners are held open together so the ports are distinct.
//
// Usage: freeport N
package main

import (
	"fmt"
	"net"
	"os"
	"strconv"
)

func main() {
	n := 1
	if len(os.Args) == 2 {
		v, err := strconv.Atoi(os.Args[1])
		if err != nil || v < 1 || v > 64 {
			fmt.Fprintln(os.Stderr, "usage: freeport N (1..64)")
			os.Exit(2)
		}
		n = v
	}
	var open []net.Listener
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, "freeport:", err)
			os.Exit(1)
		}
		open = append(open, l)
	}
	for _, l := range open {
		fmt.Println(l.Addr().(*net.TCPAddr).Port)
		l.Close()
	}
}
