package cluster

// SetURL sets where this node serves, for a node that learns it only once it listens (a port
// chosen at start). Call it before Start: Start registers the node with it.
func (n *Node) SetURL(url string) {
	if n.startOnce {
		n.log.Error("cluster: SetURL after Start is ignored", "url", url)
		return
	}
	n.o.URL = url
}
