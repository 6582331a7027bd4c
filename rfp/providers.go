package rfp

// Every built-in fabric provider, so Listen and Dial take any URL the
// binary supports.
import _ "github.com/jakiro-kv/jakiro/fabric/providers"
