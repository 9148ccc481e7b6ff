package appkit

import "github.com/gochare/gochare/actor"

// Spec describes an application whose arguments parse into a
// configuration of type C.
type Spec[C any] struct {
	Name    string
	Summary string
	// Parse reads the application's arguments. Its errors name the flag
	// at fault; they are what `gochare run` prints for bad arguments.
	Parse func(args []string) (C, error)
	// Declare declares the job's collections and handlers for cfg.
	// Declaration errors are collected by the job (actor.Job.Err).
	Declare func(j *actor.Job, cfg C)
	// LastStep, if set, tells the highest step the tasks offer at a sync
	// point when run with cfg, or ok false when it cannot be told in
	// advance (see actor.App.LastStep).
	LastStep func(cfg C) (step uint64, ok bool)
}

// App returns the application: Define parses the arguments, declares the
// job and returns the first error of either; LastStep parses the
// arguments and answers ok false for arguments Parse refuses.
func (s Spec[C]) App() actor.App {
	app := actor.App{
		Name:    s.Name,
		Summary: s.Summary,
		Define: func(j *actor.Job, args []string) error {
			cfg, err := s.Parse(args)
			if err != nil {
				return err
			}
			s.Declare(j, cfg)
			return j.Err()
		},
	}
	if s.LastStep != nil {
		app.LastStep = func(args []string) (uint64, bool) {
			cfg, err := s.Parse(args)
			if err != nil {
				return 0, false
			}
			return s.LastStep(cfg)
		}
	}
	return app
}
