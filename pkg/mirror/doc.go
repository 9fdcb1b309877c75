// Package mirror holds what the hoster client does with trees of files,
// knowing nothing of cobra, viper or HTTP libraries: the walk of a local
// sites tree by the contract's structure rules, the parallel hashing, the
// sync plan (what to upload, what to delete, with its safety rails) and the
// running of that plan against a [Remote], reporting progress to a
// [Reporter]; the pull of the server's logs into a local folder (against a
// [LogsRemote]); and the [Watch] that starts another sync after a burst of
// saves.
package mirror
