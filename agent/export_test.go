package agent

// JobDone exposes a job's end to the external tests, so they wait on the
// signal instead of polling browser_job. Nil for an unknown job.
func (d *Dispatcher) JobDone(id string) <-chan struct{} {
	d.jobs.mu.Lock()
	defer d.jobs.mu.Unlock()
	if j := d.jobs.byID[id]; j != nil {
		return j.done
	}
	return nil
}

// SetBeforeStep makes every job of d call fn before each step.
func (d *Dispatcher) SetBeforeStep(fn func(i int)) { d.jobs.beforeStep = fn }

// SetAfterStart makes every submit of d call fn once its job has started,
// before the submit checks whether its caller is still there.
func (d *Dispatcher) SetAfterStart(fn func(id string)) { d.jobs.afterStart = fn }
