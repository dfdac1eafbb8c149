package server_test

import (
	"testing"

	"github.com/edgewan/edgewan/controller/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }
