//go:build rdma

package providers

import _ "github.com/jakiro-kv/jakiro/fabric/verbs" // rdma://
