package main

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// table is one experiment's CSV: a '#' header with the machine and the
// settings, then a header row and data rows.
type table struct {
	Name     string // file name without .csv
	Cols     []string
	Rows     [][]string
	Settings []string
}

func (t *table) add(vals ...any) {
	row := make([]string, len(vals))
	for i, v := range vals {
		switch v := v.(type) {
		case float64:
			row[i] = strconv.FormatFloat(v, 'f', 4, 64)
		default:
			row[i] = fmt.Sprint(v)
		}
	}
	t.Rows = append(t.Rows, row)
}

func (t *table) write(dir string, m machineInfo) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, t.Name+".csv")
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	m.writeHeader(f, t.Settings)
	w := csv.NewWriter(f)
	w.Write(t.Cols)
	w.WriteAll(t.Rows)
	w.Flush()
	if err := w.Error(); err != nil {
		return "", err
	}
	return path, f.Close()
}
