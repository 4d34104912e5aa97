package consent

import "sync"

// dispatcher delivers events in order to listeners on one goroutine, so a
// slow listener delays later events but never the engine, and nothing is
// dropped (the queue is unbounded).
type dispatcher struct {
	mu        sync.Mutex
	q         []Event
	listeners []listener
	nextID    int
	stopped   bool
	wake      chan struct{}
	done      chan struct{}
	once      sync.Once
}

type listener struct {
	id int
	fn func(Event)
}

func newDispatcher() *dispatcher {
	return &dispatcher{wake: make(chan struct{}, 1), done: make(chan struct{})}
}

func (d *dispatcher) push(ev Event) {
	d.mu.Lock()
	if !d.stopped {
		d.q = append(d.q, ev)
	}
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *dispatcher) add(fn func(Event)) func() {
	d.mu.Lock()
	defer d.mu.Unlock()
	id := d.nextID
	d.nextID++
	d.listeners = append(d.listeners, listener{id, fn})
	return func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		for i, l := range d.listeners {
			if l.id == id {
				d.listeners = append(d.listeners[:i:i], d.listeners[i+1:]...)
				return
			}
		}
	}
}

func (d *dispatcher) run() {
	defer close(d.done)
	for {
		d.mu.Lock()
		if len(d.q) == 0 {
			stopped := d.stopped
			d.mu.Unlock()
			if stopped {
				return
			}
			<-d.wake
			continue
		}
		ev := d.q[0]
		d.q[0] = Event{}
		d.q = d.q[1:]
		ls := append([]listener(nil), d.listeners...)
		d.mu.Unlock()
		for _, l := range ls {
			l.fn(ev)
		}
	}
}

// stop lets the queue drain, then ends run.
func (d *dispatcher) stop() {
	d.once.Do(func() {
		d.mu.Lock()
		d.stopped = true
		d.mu.Unlock()
		select {
		case d.wake <- struct{}{}:
		default:
		}
	})
	<-d.done
}
