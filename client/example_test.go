package client_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/jakiro-kv/jakiro/client"
	_ "github.com/jakiro-kv/jakiro/fabric/providers" // a program links the fabrics it dials
	"github.com/jakiro-kv/jakiro/server"
)

func Example() {
	ctx := context.Background()
	// A server on the shared-memory fabric (normally: jakiro server).
	dir, _ := os.MkdirTemp("", "jakiro-example")
	defer os.RemoveAll(dir)
	srv, err := server.New(server.Config{Listen: "shm://" + filepath.Join(dir, "jakiro.sock"), Partitions: 1, Memory: 16 << 20})
	if err != nil {
		panic(err)
	}
	go srv.Serve(ctx)
	defer srv.Close()

	c, err := client.Dial(ctx, srv.Addr(), client.WithMode(client.ModeRFP))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	if err := c.Put(ctx, []byte("greeting"), []byte("hello, RFP"), 0); err != nil {
		panic(err)
	}
	v, err := c.Get(ctx, []byte("greeting"))
	fmt.Println(string(v), err)
	_, err = c.Get(ctx, []byte("nobody"))
	fmt.Println(err)

	var b client.Batch // pipelined
	b.Put([]byte("a"), []byte("1"), 0)
	b.Put([]byte("b"), []byte("2"), 0)
	b.Get([]byte("a"))
	if err := c.Run(ctx, &b); err != nil {
		panic(err)
	}
	v, err = b.Result(2)
	fmt.Println(string(v), err)
	// Output:
	// hello, RFP <nil>
	// jakiro: key not found
	// 1 <nil>
}
