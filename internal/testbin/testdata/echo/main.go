// Command echo prints its arguments, for the tests of package testbin.
package main

import (
	"fmt"
	"os"
	"strings"
)

func main() { fmt.Println(strings.Join(os.Args[1:], " ")) }
