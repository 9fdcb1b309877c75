//go:build tools

// Package deps pins the project's chosen dependencies in go.mod while the
// packages that use them are being written, so parallel work never races on
// go.mod. It is never built.
package deps

import (
	_ "github.com/dop251/goja"
	_ "github.com/evanw/esbuild/pkg/api"
	_ "github.com/fsnotify/fsnotify"
	_ "github.com/go-resty/resty/v2"
	_ "github.com/gorilla/websocket"
	_ "github.com/shirou/gopsutil/v4/cpu"
	_ "github.com/shirou/gopsutil/v4/disk"
	_ "github.com/shirou/gopsutil/v4/host"
	_ "github.com/shirou/gopsutil/v4/load"
	_ "github.com/shirou/gopsutil/v4/mem"
	_ "github.com/shirou/gopsutil/v4/net"
	_ "github.com/spf13/cobra"
	_ "github.com/spf13/viper"
	_ "github.com/vbauerster/mpb/v8"
	_ "golang.org/x/term"
	_ "gopkg.in/natefinch/lumberjack.v2"
)
