package servercmd

import "github.com/spf13/cobra"

// usageError marks a bad command, argument, flag or environment value
// (exit 2). Cobra's own such errors are wrapped in it where cobra makes
// them: the flag error function, the argument checks and the command lookup.
type usageError struct{ error }

// usageArgs makes an argument check's failures usage errors.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}
