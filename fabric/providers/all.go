package providers

import (
	_ "github.com/jakiro-kv/jakiro/fabric/shm" // shm://
	_ "github.com/jakiro-kv/jakiro/fabric/tcp" // tcp://
)
