package rfp

// The handshake tests dial real fabrics.
import _ "github.com/jakiro-kv/jakiro/fabric/providers"
