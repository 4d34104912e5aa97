package sshconsole

// Attached is the number of SSH screens running now; tests wait on it.
func (s *Server) Attached() int { return int(s.attached.Load()) }
